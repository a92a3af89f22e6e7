package web

import "html/template"

// style is every page's CSS: pages stand alone, no file is fetched.
const style = `<style>
body { font: 15px/1.45 system-ui, sans-serif; margin: 1.2em auto; max-width: 76em; padding: 0 1em; color: #1b1b1b; }
h1 { font-size: 1.3em; margin: 0 0 .3em; } h2 { font-size: 1.1em; margin-top: 1.4em; }
a { color: #005a9c; } .muted { color: #666; }
table { border-collapse: collapse; margin: .6em 0; }
th, td { padding: .25em .6em; border-bottom: 1px solid #ddd; text-align: left; vertical-align: middle; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.regression, .confirmed-regression { color: #b00020; font-weight: 600; }
.improvement { color: #0a7a2f; font-weight: 600; }
.alert { background: #fff4f4; } .step { background: #f4f7ff; }
.pager a { margin-right: 1em; }
pre { background: #f6f6f6; padding: .7em; overflow-x: auto; }
svg { max-width: 100%; height: auto; }
form.mark { display: inline; margin-left: .6em; }
</style>`

var funcs = template.FuncMap{"style": func() template.HTML { return template.HTML(style) }}

var errorTemplate = template.Must(template.New("error").Funcs(funcs).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Code}} {{.Text}} · perflab</title>{{style}}</head>
<body><h1>{{.Code}} {{.Text}}</h1><p>{{.Msg}}</p><p><a href="/">all series</a></p></body></html>
`))

var indexTemplate = template.Must(template.New("index").Funcs(funcs).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>perflab · history</title>{{style}}</head>
<body>
<h1>perflab history</h1>
<p class="muted">{{.Path}} · {{.Series}} series, the newest alerts first</p>
{{if not .Items}}<p>The history has no series yet: perflab history import SESSION, or perflab watch.</p>{{end}}
<table>
{{range .Items}}<tr{{if .Alert}} class="alert"{{end}}>
<td><a href="{{.Link}}">{{.Metric}}</a>{{if .Unit}} <span class="muted">({{.Unit}})</span>{{end}}<br><span class="muted">{{.Device}}</span></td>
<td>{{.Spark}}</td>
<td>{{if .Alert}}<span class="{{if .Alert.Confirmed}}confirmed-{{.Alert.Verdict}}{{end}}">{{.AlertText}}</span>{{else}}<span class="muted">no alert</span>{{end}}</td>
</tr>
{{end}}</table>
{{if gt .Pages 1}}<p class="pager">{{if .Prev}}<a href="{{.Prev}}">← newer</a>{{end}}page {{.Page}} of {{.Pages}}{{if .Next}} <a href="{{.Next}}">older →</a>{{end}}</p>{{end}}
</body></html>
`))

var seriesTemplate = template.Must(template.New("series").Funcs(funcs).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · perflab</title>{{style}}</head>
<body>
<p><a href="{{.Back}}">← all series</a></p>
<h1>{{.Title}}</h1>
<p class="muted">{{.Builds}} builds{{if .Unit}} · {{.Unit}}{{end}}{{if .Note}} · {{.Note}}{{end}}</p>
{{.Chart}}
<h2>Change points</h2>
{{if .Steps}}<ul>{{range .Steps}}<li>{{.}}</li>{{end}}</ul>{{else}}<p class="muted">none found</p>{{end}}
<h2>Alerts</h2>
{{if not .Alerts}}<p class="muted">none</p>{{end}}
{{range .Alerts}}<p><span class="{{if .Confirmed}}confirmed-{{.Verdict}}{{end}}">{{.Text}}</span>
{{if .MarkReal}}<span class="muted">({{.MarkReal}}{{if .MarkNote}}: {{.MarkNote}}{{end}})</span>{{end}}<br>
<span class="muted">confirmation {{.From}} → {{.To}}:</span>
{{range .Sessions}}<a href="{{.Link}}">{{.Name}}</a> {{end}}
{{if .BisectLink}}· <a href="{{.BisectLink}}">bisect</a>{{end}}
{{if $.CanMark}}<form class="mark" method="post" action="{{.MarkAction}}"><input type="hidden" name="back" value="{{$.Self}}"><input name="note" placeholder="note" size="18"> <button name="real" value="real">real</button> <button name="real" value="false">false alarm</button></form>{{end}}
</p>
{{end}}
<h2>Builds, newest first</h2>
<table>
<tr><th>#</th><th>build</th><th>time</th><th>median</th><th>n</th><th>Δ vs control</th><th>interval</th><th>verdict</th><th>session</th></tr>
{{range .Rows}}<tr class="{{if .Alert}}alert{{else if .Step}}step{{end}}"><td class="num">{{.Index}}</td><td>{{.Build}}</td><td class="muted">{{.Time}}</td>
<td class="num">{{.Median}}</td><td class="num">{{.N}}</td><td class="num">{{.Delta}}</td><td class="num">{{.CI}}</td><td class="{{.Verdict}}">{{.Verdict}}</td>
<td>{{if .SessionLink}}<a href="{{.SessionLink}}">{{.Session}}</a>{{else}}<span class="muted">{{.Kind}}</span>{{end}}</td></tr>
{{end}}</table>
{{if gt .Pages 1}}<p class="pager">{{if .Prev}}<a href="{{.Prev}}">← newer</a>{{end}}page {{.Page}} of {{.Pages}}{{if .Next}} <a href="{{.Next}}">older →</a>{{end}}</p>{{end}}
</body></html>
`))

var textTemplate = template.Must(template.New("text").Funcs(funcs).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} · perflab</title>{{style}}</head>
<body><p><a href="/">← all series</a></p><h1>{{.Title}}</h1><pre>{{.Text}}</pre></body></html>
`))

package housetest

// othersOver lists what is over the limits in files that other work in
// progress owns (issue 28 listed cli/suite.go and lab/sshtunnel here until
// their owners split them). Like knownOver, the list only shrinks.
var othersOver = map[string]bool{}

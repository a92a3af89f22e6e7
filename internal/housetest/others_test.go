package housetest

// othersOver lists what is over the limits in files that other work in
// progress is changing while issue 28 leaves them alone (cli/suite.go,
// lab/sshtunnel): their owners split them. Like knownOver, the list only
// shrinks.
var othersOver = map[string]bool{}

package main

var usageStr = `
Usage: broker [options]

Authorization Options:
        --user <user>        User required for connections
        --auth <token>       Authorization token required for connections
`

func main() {}

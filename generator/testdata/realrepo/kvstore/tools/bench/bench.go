package main

// issue sends linearizable reads as fast as it can, to measure throughput.
func issue() {}

func main() {}

// Command kvstored runs one member of a kvstore cluster.
package main

func main() {}

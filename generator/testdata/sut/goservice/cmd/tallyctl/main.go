/*
Command tallyctl is the admin and load-generation client for tallyd.
*/
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: tallyctl credit|balance|members ...")
		os.Exit(2)
	}
}

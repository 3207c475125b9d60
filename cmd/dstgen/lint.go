package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newLintCmd is a placeholder until its issue lands.
func newLintCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "lint",
		Short:  "not implemented yet",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return badInput(errors.New("lint: not implemented yet"))
		},
	}
}

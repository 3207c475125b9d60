package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newCheckCmd is a placeholder until its issue lands.
func newCheckCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "check",
		Short:  "not implemented yet",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return badInput(errors.New("check: not implemented yet"))
		},
	}
}

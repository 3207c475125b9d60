package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newExecCmd is a placeholder until its issue lands.
func newExecCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "exec",
		Short:  "not implemented yet",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return badInput(errors.New("exec: not implemented yet"))
		},
	}
}

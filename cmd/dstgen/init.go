package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newInitCmd is a placeholder until its issue lands.
func newInitCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "init",
		Short:  "not implemented yet",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return badInput(errors.New("init: not implemented yet"))
		},
	}
}

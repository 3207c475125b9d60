package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newPushCmd is a placeholder until its issue lands.
func newPushCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "push",
		Short:  "not implemented yet",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return badInput(errors.New("push: not implemented yet"))
		},
	}
}

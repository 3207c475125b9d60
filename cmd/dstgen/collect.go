package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newCollectCmd is a placeholder until its issue lands.
func newCollectCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "collect",
		Short:  "not implemented yet",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return badInput(errors.New("collect: not implemented yet"))
		},
	}
}

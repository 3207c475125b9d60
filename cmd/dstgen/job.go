package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newJobCmd is a placeholder until its issue lands.
func newJobCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "job",
		Short:  "not implemented yet",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return badInput(errors.New("job: not implemented yet"))
		},
	}
}

package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newAnalyzeCmd is a placeholder until its issue lands.
func newAnalyzeCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "analyze",
		Short:  "not implemented yet",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return badInput(errors.New("analyze: not implemented yet"))
		},
	}
}

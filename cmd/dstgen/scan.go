package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newScanCmd is a placeholder until its issue lands.
func newScanCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "scan",
		Short:  "not implemented yet",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return badInput(errors.New("scan: not implemented yet"))
		},
	}
}

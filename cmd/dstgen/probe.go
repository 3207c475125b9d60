package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newProbeCmd is a placeholder until its issue lands.
func newProbeCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "probe",
		Short:  "not implemented yet",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return badInput(errors.New("probe: not implemented yet"))
		},
	}
}

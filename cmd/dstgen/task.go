package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newTaskCmd is a placeholder until its issue lands.
func newTaskCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "task",
		Short:  "not implemented yet",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return badInput(errors.New("task: not implemented yet"))
		},
	}
}

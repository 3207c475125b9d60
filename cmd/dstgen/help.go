package main

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dstgen/dstgen/docs"
)

// newHelpCmd replaces cobra's help command: `dstgen help <command>` still
// shows the command's help, and `dstgen help <topic>` prints a page of the
// reference in docs/ (embedded), for someone who has only the binary.
// Commands win over topics; no topic is named like a command.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command | topic]",
		Short: "Help about a command, or a page of the reference (dstgen help verdicts)",
		Long: `help prints the help of a command (dstgen help init, dstgen help job start)
or a page of dstgen's reference (dstgen help verdicts), the same Markdown as
docs/ in the repository. Without an argument it prints the usage and lists
the reference topics. An unknown name exits 2.`,
		ValidArgsFunction: func(c *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []string
			for _, sub := range c.Root().Commands() {
				if sub.IsAvailableCommand() {
					names = append(names, sub.Name())
				}
			}
			return append(names, docs.Names()...), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			root := c.Root()
			if len(args) == 0 {
				if err := root.Help(); err != nil {
					return err
				}
				return printTopics(c)
			}
			if sub, rest, err := root.Find(args); err == nil && sub != root && len(rest) == 0 {
				sub.InitDefaultHelpFlag()
				return sub.Help()
			}
			if len(args) == 1 {
				page, err := docs.Read(args[0])
				if err == nil {
					_, err = c.OutOrStdout().Write(page)
					return err
				}
				if !errors.Is(err, docs.ErrUnknownTopic) {
					return fmt.Errorf("help: %w", err)
				}
			}
			return fmt.Errorf("help: unknown command or topic %q; topics: %s (or a command: dstgen help)",
				strings.Join(args, " "), strings.Join(docs.Names(), ", "))
		},
	}
}

// printTopics lists the reference pages: name and first heading.
func printTopics(c *cobra.Command) error {
	w := c.OutOrStdout()
	fmt.Fprintln(w, "\nReference topics (dstgen help <topic>):")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, t := range docs.Topics() {
		fmt.Fprintf(tw, "  %s\t%s\n", t.Name, t.Title)
	}
	return tw.Flush()
}

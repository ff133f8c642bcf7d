package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/strandhq/strand/dag"
)

// newTenantCommand is strand tenant: DolphinScheduler's tenants, the OS
// users that DAG tasks run as on the workers, with their default queues.
func newTenantCommand() *cobra.Command {
	o := &cliOptions{}
	cmd := &cobra.Command{Use: "tenant", Short: "Define tenants: the OS users DAG tasks run as on the workers, and their queues"}
	o.register(cmd)
	catalog := func() (*dag.Catalog, error) {
		svc, err := o.service()
		if err != nil {
			return nil, err
		}
		return dag.NewCatalog(svc), nil
	}
	show := func(cmd *cobra.Command, t dag.Tenant) error {
		return o.print(cmd.OutOrStdout(), t, func(tw *tabwriter.Writer) {
			fmt.Fprintf(tw, "NAME\tOS USER\tQUEUE\tDESCRIPTION\n%s\t%s\t%s\t%s\n", t.Name, t.User, t.Queue, t.Description)
		})
	}

	var user, queue, description string
	create := &cobra.Command{
		Use: "create NAME --user OS_USER [--queue QUEUE]", Short: "Create a tenant: the OS user its tasks run as, and its default queue", Args: cobra.ExactArgs(1),
		Example: "  strand tenant create etl --user etl --queue root.etl",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := catalog()
			if err != nil {
				return err
			}
			t, err := c.CreateTenant(cmd.Context(), dag.Tenant{Name: args[0], User: user, Queue: queue, Description: description}, cliIdentity())
			if err != nil {
				return err
			}
			return show(cmd, t)
		},
	}
	create.Flags().StringVar(&user, "user", "", "the OS user the tenant's tasks run as on the workers")
	create.Flags().StringVar(&queue, "queue", "", "the (YARN) queue of the tenant's tasks that name none")
	create.Flags().StringVar(&description, "description", "", "what the tenant is for")

	update := &cobra.Command{
		Use: "update NAME [--user OS_USER] [--queue QUEUE] [--description TEXT]", Short: "Change a tenant's OS user, queue or description", Args: cobra.ExactArgs(1),
		Example: "  strand tenant update etl --queue root.etl.night",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := catalog()
			if err != nil {
				return err
			}
			var ch dag.TenantChange
			f := cmd.Flags()
			if f.Changed("user") {
				ch.User = &user
			}
			if f.Changed("queue") {
				ch.Queue = &queue
			}
			if f.Changed("description") {
				ch.Description = &description
			}
			t, err := c.UpdateTenant(cmd.Context(), args[0], ch, cliIdentity())
			if err != nil {
				return err
			}
			return show(cmd, t)
		},
	}
	update.Flags().StringVar(&user, "user", "", "the OS user the tenant's tasks run as")
	update.Flags().StringVar(&queue, "queue", "", "the default queue (empty: none)")
	update.Flags().StringVar(&description, "description", "", "what the tenant is for")

	list := &cobra.Command{
		Use: "list", Short: "List the tenants", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := catalog()
			if err != nil {
				return err
			}
			all, err := c.Tenants(cmd.Context())
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), all, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "NAME\tOS USER\tQUEUE\tDESCRIPTION")
				for _, t := range all {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, t.User, t.Queue, t.Description)
				}
			})
		},
	}
	showCmd := &cobra.Command{
		Use: "show NAME", Short: "Show a tenant", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := catalog()
			if err != nil {
				return err
			}
			t, err := c.Tenant(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return show(cmd, t)
		},
	}
	del := &cobra.Command{
		Use: "delete NAME", Short: "Delete a tenant (tasks naming it fail from then on)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := catalog()
			if err != nil {
				return err
			}
			if err := c.DeleteTenant(cmd.Context(), args[0], cliIdentity()); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted tenant %s\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(create, update, list, showCmd, del)
	return cmd
}

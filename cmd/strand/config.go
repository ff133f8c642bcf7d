package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// applySettings fills the flags the command line left unset, first from the
// environment (STRAND_ and the flag's name in capitals, dashes as
// underscores: --poll-wait is STRAND_POLL_WAIT), then from the JSON file
// named by --config (an object whose keys are flag names). An unknown key
// or a bad value is bad input.
func applySettings(cmd *cobra.Command, configFile string) error {
	var file map[string]any
	if configFile != "" {
		b, err := os.ReadFile(configFile)
		if err != nil {
			return &usageError{fmt.Errorf("--config: %v", err)}
		}
		if err := json.Unmarshal(b, &file); err != nil {
			return &usageError{fmt.Errorf("--config %s: not a JSON object: %v", configFile, err)}
		}
		var unknown []string
		for k := range file {
			if f := cmd.Flags().Lookup(k); f == nil || k == "config" {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) > 0 {
			sort.Strings(unknown)
			return &usageError{fmt.Errorf("--config %s: unknown settings %s", configFile, strings.Join(unknown, ", "))}
		}
	}
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || f.Name == "config" || f.Name == "help" {
			return
		}
		env := "STRAND_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(env); ok {
			if e := f.Value.Set(v); e != nil {
				err = &usageError{fmt.Errorf("%s=%q: %v", env, v, e)}
			}
			return
		}
		if v, ok := file[f.Name]; ok {
			if e := f.Value.Set(fmt.Sprint(v)); e != nil {
				err = &usageError{fmt.Errorf("--config %s: %s: %v", configFile, f.Name, e)}
			}
		}
	})
	return err
}

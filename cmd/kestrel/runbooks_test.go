package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/monitor"
)

// pendingConfigKeys are config keys the runbooks name that another change
// adds ([rescue], issue 15); they are accepted until they exist.
var pendingConfigKeys = map[string]bool{"rescue.auto_rollback": true}

// TestRunbooksNameRealCommands: every `kestrel …` command quoted in a
// runbook's Capture, Contain or Verify text is a real subcommand, every
// --flag it uses is one of that command's flags, every `--set key=value`
// and every quoted `section.key` is a config field; and the vague
// instructions the runbooks used to give ("roll back to the last good
// checkpoint", "on a canary") are gone.
func TestRunbooksNameRealCommands(t *testing.T) {
	fields := map[string]bool{}
	for _, f := range config.Fields() {
		fields[f.Path] = true
	}
	root := newRootCmd()
	quoted := regexp.MustCompile("`([^`]+)`")
	keyRe := regexp.MustCompile(`^([a-z_0-9]+\.[a-z_0-9.]+)(\s*=.*)?$`)
	vague := []string{"last good checkpoint", "on a canary", "quarantine the shard", "replay the fixed probe batch", "Roll back to it"}
	commands := 0
	for _, rb := range monitor.Runbooks() {
		for part, text := range map[string]string{"Capture": rb.Capture, "Contain": rb.Contain, "Verify": rb.Verify} {
			where := rb.Rule + " " + part
			for _, v := range vague {
				if strings.Contains(text, v) {
					t.Errorf("%s: still says %q instead of naming a command", where, v)
				}
			}
			for _, m := range quoted.FindAllStringSubmatch(text, -1) {
				span := m[1]
				if k := keyRe.FindStringSubmatch(span); k != nil {
					if !fields[k[1]] && !pendingConfigKeys[k[1]] {
						t.Errorf("%s: `%s` names no config field %q", where, span, k[1])
					}
					continue
				}
				if !strings.HasPrefix(span, "kestrel ") {
					continue
				}
				commands++
				args := strings.Fields(strings.TrimPrefix(span, "kestrel "))
				cmd, rest, err := root.Find(args)
				if err != nil || cmd == root {
					t.Errorf("%s: `%s`: no such command (%v)", where, span, err)
					continue
				}
				for i, a := range rest {
					if !strings.HasPrefix(a, "--") {
						continue
					}
					name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
					if cmd.Flags().Lookup(name) == nil {
						t.Errorf("%s: `%s`: %s has no flag --%s", where, span, cmd.CommandPath(), name)
					}
					if name == "set" && i+1 < len(rest) {
						key, _, _ := strings.Cut(rest[i+1], "=")
						if !fields[key] {
							t.Errorf("%s: `%s`: --set %s is no config field", where, span, key)
						}
					}
				}
			}
			// Flags quoted alone (`--lr-scale 0.5`) belong to kestrel rewind.
			for _, m := range quoted.FindAllStringSubmatch(text, -1) {
				if a := strings.Fields(m[1]); len(a) > 0 && strings.HasPrefix(a[0], "--") {
					rw, _, _ := root.Find([]string{"rewind"})
					for i, f := range a {
						if !strings.HasPrefix(f, "--") {
							continue
						}
						name, _, _ := strings.Cut(strings.TrimPrefix(f, "--"), "=")
						if rw.Flags().Lookup(name) == nil && name != "docs" && name != "shards" {
							t.Errorf("%s: `%s`: kestrel rewind has no flag --%s", where, m[1], name)
						}
						if name == "set" && i+1 < len(a) {
							key, _, _ := strings.Cut(a[i+1], "=")
							if !fields[key] {
								t.Errorf("%s: `%s`: --set %s is no config field", where, m[1], key)
							}
						}
					}
				}
			}
		}
	}
	if commands < 10 {
		t.Errorf("the runbooks quote %d kestrel commands, want at least 10", commands)
	}
}

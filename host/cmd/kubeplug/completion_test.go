package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCompletion: kubeplug --help lists completion, which writes each
// shell's script; a missing or unknown shell is a usage error.
func TestCompletion(t *testing.T) {
	out, _, code := kubeplug(t, "", "--help")
	require.Equal(t, exitOK, code)
	require.Regexp(t, `(?m)^  completion\s+Generate the autocompletion script`, out)

	for _, tc := range []struct{ shell, want string }{
		{"bash", "complete -o default -F __start_kubeplug kubeplug"},
		{"zsh", "#compdef kubeplug"},
		{"fish", "complete -c kubeplug "},
		{"powershell", "Register-ArgumentCompleter -CommandName 'kubeplug'"},
	} {
		t.Run(tc.shell, func(t *testing.T) {
			out, errOut, code := kubeplug(t, "", "completion", tc.shell)
			require.Equal(t, exitOK, code, errOut)
			require.Contains(t, out, tc.want)
		})
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no shell", []string{"completion"}, "kubeplug completion: want a shell, one of bash, fish, powershell, zsh"},
		{"unknown shell", []string{"completion", "tcsh"}, `kubeplug completion: unknown shell "tcsh": want one of bash, fish, powershell, zsh`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := kubeplug(t, "", tc.args...)
			require.Equal(t, exitInput, code)
			require.Contains(t, errOut, tc.want)
			require.Empty(t, out)
		})
	}
}

// TestBashCompletes: the bash script, sourced in bash, completes a command
// and a flag by asking the kubeplug binary on PATH (this test binary).
func TestBashCompletes(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	// The script needs the bash-completion package's
	// _get_comp_words_by_ref; where the package is missing, as on this
	// project's CI machines, a stand-in that splits the line on blanks,
	// which is all the lines below need.
	wordsByRef := "source /usr/share/bash-completion/bash_completion 2>/dev/null || " +
		`_get_comp_words_by_ref() { cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }` + "\n"
	script, _, code := kubeplug(t, "", "completion", "bash")
	require.Equal(t, exitOK, code)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kubeplug.bash"), []byte(script), 0o644))
	self, err := filepath.Abs(os.Args[0])
	require.NoError(t, err)
	require.NoError(t, os.Symlink(self, filepath.Join(dir, "kubeplug")))

	for _, tc := range []struct {
		line string
		want []string
	}{
		{"kubeplug te", []string{"test"}},
		{"kubeplug completion z", []string{"zsh"}},
		{"kubeplug test --mod", []string{"--module", "--module-name"}},
	} {
		t.Run(tc.line, func(t *testing.T) {
			cmd := exec.Command(bash, "--norc", "-c", wordsByRef+`source kubeplug.bash && COMP_LINE="$LINE" && COMP_POINT=${#LINE} && read -ra COMP_WORDS <<<"$LINE" && COMP_CWORD=$((${#COMP_WORDS[@]}-1)) && __start_kubeplug && printf '%s\n' "${COMPREPLY[@]}"`)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "LINE="+tc.line, envAsKubeplug+"=1")
			// Its stderr holds compopt's complaint that no completion is
			// under way: bash's own, not kubeplug's.
			out, err := cmd.Output()
			require.NoError(t, err, "%s", out)
			require.Equal(t, tc.want, strings.Fields(string(out)))
		})
	}
}

package main

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/template"
)

const completionHeader = `Usage: redisync completion bash|zsh

Prints a script that makes the shell complete redisync's subcommands, the flags of each, the
latch's operations, and COMMAND with its arguments:

  bash  source <(redisync completion bash)      # in ~/.bashrc
        redisync completion bash > /etc/bash_completion.d/redisync
  zsh   source <(redisync completion zsh)       # in ~/.zshrc, after compinit
        redisync completion zsh > "${fpath[1]}/_redisync"

The flags a subcommand takes are those its --help lists, read when the script is printed: print
it again after an upgrade. NAMEs are not completed (that would read Redis at every TAB).
`

const completionFooter = `
Exit status: 0; 64 for another shell or a bad argument.
`

// subcommands are the tool's subcommands, as completion offers them.
var subcommands = []string{"lock", "semaphore", "latch", "rate", "inspect", "list", "unlock", "demo", "completion", "version", "help"}

// fileFlags are the flags whose value is a file.
var fileFlags = []string{"password-file", "sentinel-password-file", "cacert", "cert", "key"}

func cmdCompletion(args []string, stdout, stderr io.Writer) int {
	cmd := newCommand("completion", completionHeader, completionFooter, stdout, stderr)
	pos, _, _, code := cmd.parse(args, 0)
	if code >= 0 {
		return code
	}
	if len(pos) != 1 || (pos[0] != "bash" && pos[0] != "zsh") {
		return cmd.usageError("want bash or zsh")
	}
	script := bashCompletion
	if pos[0] == "zsh" {
		script = zshCompletion
	}
	if err := template.Must(template.New(pos[0]).Parse(script)).Execute(stdout, completionData()); err != nil {
		fmt.Fprintf(stderr, "redisync completion: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// flagsOf reads the flags of the subcommand sub from its help: each flag's name, and whether it
// takes a value (flag.PrintDefaults writes "  -name TYPE" for those, "  -name" for the others).
func flagsOf(sub string) (flags []string, valued map[string]bool) {
	var help bytes.Buffer
	if sub == "" {
		// The flags that go before a subcommand: the connection's, -q and -v.
		help.WriteString(leadingFlagsHelp())
	} else {
		run([]string{sub, "--help"}, &help, io.Discard)
	}
	valued = map[string]bool{}
	for _, line := range strings.Split(help.String(), "\n") {
		rest, ok := strings.CutPrefix(line, "  -")
		if !ok || strings.HasPrefix(rest, "-") {
			continue
		}
		decl, _, _ := strings.Cut(rest, "\t")
		f := strings.Fields(decl)
		if len(f) == 0 {
			continue
		}
		name := "--" + f[0]
		if len(f[0]) == 1 {
			name = "-" + f[0]
		}
		flags = append(flags, name)
		valued[name] = len(f) > 1
	}
	slices.Sort(flags)
	return flags, valued
}

// leadingFlagsHelp is the flag defaults of what goes before a subcommand.
func leadingFlagsHelp() string {
	cmd := newCommand("", "", "", io.Discard, io.Discard)
	var conn connFlags
	conn.register(cmd.fs)
	var b bytes.Buffer
	cmd.fs.SetOutput(&b)
	cmd.fs.PrintDefaults()
	return b.String()
}

// completionTable is what both scripts are made of.
type completionTable struct {
	Subcommands string
	Leading     string // the flags before a subcommand
	Subs        []subFlags
	ValueFlags  string // a case pattern: every flag that takes a value
	FileFlags   string // a case pattern: the flags whose value is a file
}

type subFlags struct{ Name, Flags string }

func completionData() completionTable {
	all := map[string]bool{}
	leading, valued := flagsOf("")
	t := completionTable{Subcommands: strings.Join(subcommands, " "), Leading: strings.Join(leading, " ")}
	for k, v := range valued {
		all[k] = all[k] || v
	}
	for _, sub := range subcommands {
		if sub == "version" || sub == "help" {
			continue
		}
		flags, valued := flagsOf(sub)
		t.Subs = append(t.Subs, subFlags{sub, strings.Join(flags, " ")})
		for k, v := range valued {
			all[k] = all[k] || v
		}
	}
	// Flags take one dash or two: a case pattern has both.
	var values, files []string
	for name, v := range all {
		if v {
			values = append(values, name)
			if long, ok := strings.CutPrefix(name, "--"); ok {
				values = append(values, "-"+long)
			}
		}
	}
	slices.Sort(values)
	for _, f := range fileFlags {
		files = append(files, "-"+f, "--"+f)
	}
	t.ValueFlags, t.FileFlags = strings.Join(values, "|"), strings.Join(files, "|")
	return t
}

const bashCompletion = `# bash completion for redisync: source <(redisync completion bash)
_redisync() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local sub= w i pos=0 flags
    COMPREPLY=()
    case $prev in
    {{.FileFlags}}) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    {{.ValueFlags}}) return ;;
    esac
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        case $w in
        --)
            if ((i == COMP_CWORD - 1)); then COMPREPLY=($(compgen -c -- "$cur")); else COMPREPLY=($(compgen -f -- "$cur")); fi
            return ;;
        {{.ValueFlags}}) ((i++)) ;;
        -*) ;;
        *) if [[ -z $sub ]]; then sub=$w; else ((pos++)); fi ;;
        esac
    done
    case $sub in
    '') flags="{{.Leading}}" ;;
{{- range .Subs}}
    {{.Name}}) flags="{{.Flags}}" ;;
{{- end}}
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$flags" -- "$cur"))
        return
    fi
    case $sub in
    '') COMPREPLY=($(compgen -W "{{.Subcommands}}" -- "$cur")) ;;
    latch) ((pos == 1)) && COMPREPLY=($(compgen -W "set countdown count await" -- "$cur")) ;;
    completion) ((pos == 0)) && COMPREPLY=($(compgen -W "bash zsh" -- "$cur")) ;;
    lock|semaphore|rate)
        if ((pos == 1)); then COMPREPLY=($(compgen -c -- "$cur")); elif ((pos > 1)); then COMPREPLY=($(compgen -f -- "$cur")); fi ;;
    esac
}
complete -F _redisync redisync
`

const zshCompletion = `#compdef redisync
# zsh completion for redisync: source <(redisync completion zsh), after compinit
_redisync() {
    local cur=${words[CURRENT]} prev=${words[CURRENT-1]}
    local sub= w
    local -i i pos=0
    local -a flags
    case $prev in
    {{.FileFlags}}) _files; return ;;
    {{.ValueFlags}}) return 1 ;;
    esac
    for ((i = 2; i < CURRENT; i++)); do
        w=${words[i]}
        case $w in
        --)
            if ((i == CURRENT - 1)); then _command_names -e; else _files; fi
            return ;;
        {{.ValueFlags}}) ((i++)) ;;
        -*) ;;
        *) if [[ -z $sub ]]; then sub=$w; else ((pos++)); fi ;;
        esac
    done
    case $sub in
    '') flags=({{.Leading}}) ;;
{{- range .Subs}}
    {{.Name}}) flags=({{.Flags}}) ;;
{{- end}}
    esac
    if [[ $cur == -* ]]; then
        compadd -- $flags
        return
    fi
    case $sub in
    '') compadd -- {{.Subcommands}} ;;
    latch) ((pos == 1)) && compadd -- set countdown count await ;;
    completion) ((pos == 0)) && compadd -- bash zsh ;;
    lock|semaphore|rate)
        if ((pos == 1)); then _command_names -e; elif ((pos > 1)); then _files; fi ;;
    esac
}
if [[ $funcstack[1] == _redisync ]]; then _redisync "$@"; else compdef _redisync redisync; fi
`

# bash completion for wbguardctl(8)
_wbguardctl()
{
	local cur prev words cword
	if declare -F _init_completion >/dev/null; then
		_init_completion || return
	else
		cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
		words=("${COMP_WORDS[@]}") cword=$COMP_CWORD
	fi
	local commands="status list flush handovers metrics reload ping verify doctor"
	local opts="--help --version --json --socket --system --wait --timeout --limit --dir --cgroup-root --state-dir --proc-sys --hooks-file --config --pod --namespace --container"

	case $prev in
	--socket | --hooks-file | --config)
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	--dir | --cgroup-root | --state-dir | --proc-sys)
		COMPREPLY=($(compgen -d -- "$cur"))
		return ;;
	--timeout | --limit | --pod | --namespace | --container)
		return ;;
	esac
	local i cmd=""
	for ((i = 1; i < cword; i++)); do
		case ${words[i]} in
		--socket | --timeout | --limit | --dir | --cgroup-root | --state-dir | --proc-sys | --hooks-file | --config | --pod | --namespace | --container) ((i++)) ;;
		-*) ;;
		*) cmd=${words[i]}; break ;;
		esac
	done
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$opts" -- "$cur"))
	elif [[ -z $cmd ]]; then
		COMPREPLY=($(compgen -W "$commands" -- "$cur"))
	elif [[ $cmd == flush ]]; then
		# a cgroup path under the cgroupfs root
		local root=/sys/fs/cgroup
		COMPREPLY=($(cd "$root" 2>/dev/null && compgen -d -- "${cur#/}" | sed 's|^|/|'))
	fi
}
complete -F _wbguardctl wbguardctl

# bench/suite_lib.sh: what the suite benchmarks share, sourced from the
# repository's top: suite_module NAME builds perflab into $tmp/perflab
# (tmp a new folder, removed on exit unless KEEP is set) and makes
# $tmp/repo a git repository holding the Go module example.com/NAME, the
# current folder; suite_commit MSG commits all of it.
suite_module() {
	tmp=$(mktemp -d)
	trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
	go build -o "$tmp/perflab" .
	repo="$tmp/repo"
	mkdir -p "$repo"
	cd "$repo"
	git init -q
	printf 'module example.com/%s\n\ngo 1.26\n' "$1" > go.mod
}

suite_commit() {
	git add -A > /dev/null && git -c user.name=b -c user.email=b@b commit -q --allow-empty -m "$1"
}

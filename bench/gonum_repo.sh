# bench/gonum_repo.sh, sourced by the gonum studies: gonum_repo DIR
# VERSION... makes DIR a git repository with gonum at each VERSION (from
# the module cache or the Go module proxy) committed and tagged in turn.
gonum_repo() {
	local repo=$1 v dir
	shift
	mkdir -p "$repo"
	git -C "$repo" init -q
	for v in "$@"; do
		dir=$(GOFLAGS=-mod=mod go mod download -json "gonum.org/v1/gonum@$v" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
		find "$repo" -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +
		cp -r "$dir/." "$repo/"
		chmod -R u+w "$repo"
		git -C "$repo" add -A > /dev/null
		git -C "$repo" -c user.name=b -c user.email=b@b commit -qm "$v"
		git -C "$repo" tag "$v"
	done
}

# gonum_study VERSION...: a temporary folder $tmp (removed on exit) with
# this perflab built in it ($tmp/perflab) and $repo, gonum's repository of
# VERSIONs (gonum_repo).
gonum_study() {
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	go build -o "$tmp/perflab" .
	repo="$tmp/gonum"
	gonum_repo "$repo" "$@"
}

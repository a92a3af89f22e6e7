# bench/gonum_repo.sh, sourced by the real-module studies.
#
# module_repo DIR MODULE VERSION... makes DIR a git repository with MODULE
# at each VERSION (from the module cache or the Go module proxy) committed
# and tagged in turn; gonum_repo DIR VERSION... is module_repo for gonum.
module_repo() {
	local repo=$1 mod=$2 v dir
	shift 2
	mkdir -p "$repo"
	git -C "$repo" init -q
	for v in "$@"; do
		dir=$(GOFLAGS=-mod=mod go mod download -json "$mod@$v" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
		find "$repo" -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +
		cp -r "$dir/." "$repo/"
		chmod -R u+w "$repo"
		git -C "$repo" add -A > /dev/null
		git -C "$repo" -c user.name=b -c user.email=b@b commit -qm "$v"
		git -C "$repo" tag "$v"
	done
}
gonum_repo() {
	local repo=$1
	shift
	module_repo "$repo" gonum.org/v1/gonum "$@"
}

# module_study MODULE VERSION...: a temporary folder $tmp (removed on
# exit) with this perflab built in it ($tmp/perflab) and $repo, MODULE's
# repository of VERSIONs (module_repo); gonum_study VERSION... for gonum.
module_study() {
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	go build -o "$tmp/perflab" .
	repo="$tmp/repo"
	module_repo "$repo" "$@"
}
gonum_study() { module_study gonum.org/v1/gonum "$@"; }

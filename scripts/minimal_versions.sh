#!/usr/bin/env bash
# Builds the crate, with every feature, against each of its dependencies at
# the minimum its Cargo.toml declares: what a user whose lock holds those
# versions gets on adding it (issue 43: tracing was declared "0.1" while the
# crate needs 0.1.36, and such a project failed with E0308).
#
# A scratch project beside the crate depends on it by path and on each of
# its normal dependencies with the crate's own requirement and features;
# `-Z direct-minimal-versions` (a nightly flag of cargo, which the stable
# toolchain takes with RUSTC_BOOTSTRAP=1) resolves those at their minimum,
# and the rest as usual. Needs python3 (to read `cargo metadata`).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
target="${1:-$root/target/minimal-versions}"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/src"
echo 'fn main() {}' >"$scratch/src/main.rs"
cargo metadata --format-version 1 --no-deps --manifest-path "$root/Cargo.toml" |
  python3 -c '
import json, sys
root = sys.argv[1]
meta = json.load(sys.stdin)
crate = next(p for p in meta["packages"] if p["name"] == "hashwheel")
features = [f for f in crate["features"] if f != "default"]
print("[package]\nname = \"minimal-versions\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n")
print("[dependencies]")
print("hashwheel = { path = %s, features = %s }" % (json.dumps(root), json.dumps(features)))
seen = set()
for dep in crate["dependencies"]:
    if dep["kind"] is not None or dep["name"] in seen:
        continue
    seen.add(dep["name"])
    print("%s = { version = %s, default-features = false, features = %s }"
          % (dep["name"], json.dumps(dep["req"]), json.dumps(dep["features"])))
print("\n[workspace]")
' "$root" >"$scratch/Cargo.toml"
cd "$scratch"
RUSTC_BOOTSTRAP=1 cargo update -Z direct-minimal-versions --quiet
echo "resolved at their minimum:"
cargo tree --depth 1 -e normal --prefix none | sed -n '2,$p' | sort -u
CARGO_TARGET_DIR="$target" cargo check --quiet
echo "the crate builds with each dependency at its declared minimum"

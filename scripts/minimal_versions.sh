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
# and the rest as a user's cargo would for a project of the crate's
# `rust-version` (the scratch declares it, and the resolver prefers the
# versions that support it: `incompatible-rust-versions = "fallback"`).
#
# Then every package of that resolution must declare a `rust-version` no
# newer than the crate's (issue 58): the crate promises to build on its
# `rust-version` with its dependencies at their declared minimum, so a
# minimum that needs a newer Rust makes that promise false. (The toolchain
# that checks is the machines' one, so the crate's own code is held to its
# `rust-version` by clippy's `incompatible_msrv`, denied in Cargo.toml.)
# Needs python3 (to read `cargo metadata`).
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
print("[package]\nname = \"minimal-versions\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false")
print("rust-version = %s\n" % json.dumps(crate["rust_version"]))
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
CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS=fallback RUSTC_BOOTSTRAP=1 \
  cargo update -Z direct-minimal-versions --quiet
echo "resolved at their minimum:"
cargo tree --depth 1 -e normal --prefix none | sed -n '2,$p' | sort -u
# Every platform's packages, not only this one's (windows-sys included).
cargo metadata --format-version 1 | python3 -c '
import json, sys
meta = json.load(sys.stdin)
ids = {node["id"] for node in meta["resolve"]["nodes"]}
packages = [p for p in meta["packages"] if p["id"] in ids]
ours = next(p for p in packages if p["name"] == "hashwheel")["rust_version"]
if not ours:
    sys.exit("hashwheel declares no rust-version")
def version(v):
    return tuple(int(x) for x in v.split("."))
newer = sorted(
    ((p["rust_version"], p["name"], p["version"]) for p in packages
     if p["rust_version"] and version(p["rust_version"]) > version(ours)),
    key=lambda r: version(r[0]),
)
highest = max((p for p in packages if p["rust_version"] and p["name"] not in ("hashwheel", "minimal-versions")),
              key=lambda p: version(p["rust_version"]))
if newer:
    print("these dependencies, at the versions the crate allows, need a newer Rust than its rust-version %s:" % ours, file=sys.stderr)
    for rust, name, v in newer:
        print("  %s %s: rust-version %s" % (name, v, rust), file=sys.stderr)
    print("raise the crate'"'"'s rust-version, or the minimum of the dependency that pulls them in", file=sys.stderr)
    sys.exit(1)
print("every dependency supports the crate'"'"'s rust-version %s (the highest: %s %s, %s)"
      % (ours, highest["name"], highest["version"], highest["rust_version"]))
'
CARGO_TARGET_DIR="$target" cargo check --quiet
echo "the crate builds with each dependency at its declared minimum"

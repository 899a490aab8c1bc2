#!/usr/bin/env bash
# Installs nginx when it is missing (apt-get), builds the root package's Benchmarks (the raw libcurl loop) and Demo,
# and this package in release mode, and runs the comparison. Arguments go to Peers: --rounds N, --quick, --only NAME.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null
    # The package starts a system nginx on port 80; the comparison runs its own.
    (service nginx stop || systemctl stop nginx || pkill -x nginx) >/dev/null 2>&1 || true
fi
# The small-files and capped-file comparisons run wget2 and aria2c beside curl when they are there (left out, and
# said so, when apt cannot get them).
for tool in wget2 aria2c; do
    if ! command -v "$tool" >/dev/null; then
        package=$tool
        [ "$tool" = aria2c ] && package=aria2
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" >/dev/null) || true
    fi
done
(cd ../.. && swift build -c release --product Benchmarks && swift build -c release --product Demo)
# SwiftPM keeps the build plan of a path dependency when a source file is added to it (and then cannot find the
# new file's types): plan again every time, which costs a second.
rm -f .build/release.yaml
swift build -c release --product Peers
exec .build/release/Peers --benchmarks ../../.build/release/Benchmarks "$@"

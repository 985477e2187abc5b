#!/usr/bin/env bash
# The browser tests drive Debian's chromium through Playwright; install it when missing.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
else
    echo "chromium is missing: install it (apt-get install chromium) to run the browser tests;" >&2
    echo "they will be skipped." >&2
fi

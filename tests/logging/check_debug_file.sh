#!/usr/bin/env bash
# SCCL_DEBUG / SCCL_DEBUG_SUBSYS / SCCL_DEBUG_FILE: runs a program that makes communicators and
# checks that the log goes to the named file (with %p expanded), that INFO lines appear at INFO,
# that a subsystem mask filters them out, and that nothing is written when logging is off.
set -euo pipefail
program=$1; work=$2
rm -rf "$work"; mkdir -p "$work"

SCCL_DEBUG=INFO SCCL_DEBUG_FILE="$work/log.%p" "$program" > /dev/null
log=$(ls "$work"/log.* | head -n 1)
[[ "$log" =~ log\.[0-9]+$ ]] || { echo "%p was not expanded: $log"; exit 1; }
grep -q "INFO INIT" "$log" || { echo "no INFO INIT line in $log"; cat "$log"; exit 1; }
grep -q "ready" "$log" || { echo "no communicator-ready line"; exit 1; }
rm -f "$work"/log.*

SCCL_DEBUG=INFO SCCL_DEBUG_SUBSYS=^INIT SCCL_DEBUG_FILE="$work/masked.%p" "$program" > /dev/null
if grep -q "INFO INIT" "$work"/masked.*; then echo "^INIT did not mask INIT lines"; exit 1; fi

SCCL_DEBUG_FILE="$work/off.%p" "$program" > /dev/null
if ls "$work"/off.* > /dev/null 2>&1; then echo "a log file was opened with logging off"; exit 1; fi
echo "logging settings behave as documented"

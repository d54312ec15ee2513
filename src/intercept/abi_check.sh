#!/usr/bin/env bash
# Checks libsluice_cuda.so's binary contract (run by ctest as intercept_abi_check):
#  1. it depends on libc, libdl, libpthread (and the loader) only;
#  2. it exports cu* symbols only;
#  3. none of its objects has static constructors (.init_array / .ctors sections).
# Usage: abi_check.sh <libsluice_cuda.so> <object files...>
set -euo pipefail
lib=$1
shift
status=0
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
for n in $needed; do
  case $n in
    libc.so.*|libdl.so.*|libpthread.so.*|ld-linux*.so.*) ;;
    *) echo "FAIL: unexpected dependency $n"; status=1 ;;
  esac
done
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
if [ "$soname" != "libcuda.so.1" ]; then
  echo "FAIL: SONAME is '$soname', expected libcuda.so.1"; status=1
fi
bad_exports=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^cu' || true)
if [ -n "$bad_exports" ]; then
  echo "FAIL: non-cu exports:"; echo "$bad_exports"; status=1
fi
count=$(nm -D --defined-only "$lib" | wc -l)
for obj in "$@"; do
  if readelf -S -W "$obj" | grep -Eq '\.(init_array|ctors)'; then
    echo "FAIL: static constructor in $obj"; status=1
  fi
done
echo "needed: $needed; soname: $soname; exported cu* symbols: $count"
[ $status -eq 0 ] && echo "PASS"
exit $status

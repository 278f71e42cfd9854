# cmake -DFILE=<elf> -P remove_rpath.cmake: drops RPATH/RUNPATH from a bundled ELF file, so that
# only LD_LIBRARY_PATH (the bundle's lib/) finds its libraries (scripts/gpu/bundle.sh).
file(RPATH_REMOVE FILE "${FILE}")

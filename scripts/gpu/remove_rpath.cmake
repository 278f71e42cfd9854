# cmake -DFILES=<elf;elf;...> -P remove_rpath.cmake: drops RPATH/RUNPATH from the bundled ELF
# files, so that only LD_LIBRARY_PATH (the bundle's lib/) finds their libraries
# (scripts/gpu/bundle.sh). Files without one are left as they are.
foreach(_file IN LISTS FILES)
  file(READ "${_file}" _head LIMIT 4 HEX)
  if(_head STREQUAL "7f454c46")
    file(RPATH_REMOVE FILE "${_file}")
  endif()
endforeach()

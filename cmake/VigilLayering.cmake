# The layering table: what each component of the tree declares it depends on,
# written at configure time for the layering check (cmake/layering_check.cmake,
# run by ctest as `layering_check`).
#
# A component is a directory of the tree that has a CMakeLists.txt defining
# targets (engine/<name>, outputs, bpf, plugins, plugins/<name>; never tests/).
# Its declared dependencies are the components of the targets its targets
# link (target_link_libraries, PUBLIC, PRIVATE or INTERFACE; direct only, not
# what those bring along). A new component is picked up by being a directory
# with a CMakeLists.txt; it declares a dependency by linking the target.
#
# The table is plain text, one record a line:
#   component <dir>             a component (its directory from the root)
#   target <dir> <target>       a target defined there
#   dep <dir> <dir2>            <dir> links a target of <dir2>
#   incdir <path> <dir>         an include directory of <dir>'s targets other
#                               than the root (<path> from the root)

# The component (directory from the root) of target `tgt`, in `out`; "" when
# it is not one of the tree's components (imported, or the root's).
function(_vigil_layer_of tgt out)
  set(${out} "" PARENT_SCOPE)
  if(NOT TARGET ${tgt})
    return()
  endif()
  get_target_property(real ${tgt} ALIASED_TARGET)
  if(real)
    set(tgt ${real})
  endif()
  get_target_property(imported ${tgt} IMPORTED)
  if(imported)
    return()
  endif()
  get_target_property(dir ${tgt} SOURCE_DIR)
  file(RELATIVE_PATH rel ${VIGIL_ROOT} ${dir})
  if(rel STREQUAL "" OR rel MATCHES "^(\\.\\.|tests(/|$))")
    return()
  endif()
  set(${out} ${rel} PARENT_SCOPE)
endfunction()

# Appends to the list named `out_var` the records of directory `dir` and,
# recursively, of its subdirectories.
function(_vigil_layer_dir dir out_var)
  set(acc ${${out_var}})
  file(RELATIVE_PATH rel ${VIGIL_ROOT} ${dir})
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  if(targets AND NOT rel STREQUAL "" AND NOT rel MATCHES "^tests(/|$)")
    list(APPEND acc "component ${rel}")
    set(deps)
    foreach(t IN LISTS targets)
      list(APPEND acc "target ${rel} ${t}")
      get_target_property(type ${t} TYPE)
      set(links)
      if(NOT type STREQUAL "INTERFACE_LIBRARY" AND NOT type STREQUAL "UTILITY")
        get_target_property(l ${t} LINK_LIBRARIES)
        if(l)
          list(APPEND links ${l})
        endif()
      endif()
      if(NOT type STREQUAL "UTILITY")
        get_target_property(l ${t} INTERFACE_LINK_LIBRARIES)
        if(l)
          list(APPEND links ${l})
        endif()
        get_target_property(incs ${t} INTERFACE_INCLUDE_DIRECTORIES)
        foreach(inc IN LISTS incs)
          if(IS_ABSOLUTE "${inc}")
            file(RELATIVE_PATH irel ${VIGIL_ROOT} ${inc})
            if(NOT irel STREQUAL "" AND NOT irel MATCHES "^\\.\\.")
              list(APPEND acc "incdir ${irel} ${rel}")
            endif()
          endif()
        endforeach()
      endif()
      foreach(lib IN LISTS links)
        # $<LINK_ONLY:x> (a static library's private dependency) names x.
        string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" lib "${lib}")
        if(lib MATCHES "^\\$<")
          continue()
        endif()
        _vigil_layer_of(${lib} other)
        if(other AND NOT other STREQUAL rel)
          list(APPEND deps ${other})
        endif()
      endforeach()
    endforeach()
    list(REMOVE_DUPLICATES deps)
    list(SORT deps)
    foreach(d IN LISTS deps)
      list(APPEND acc "dep ${rel} ${d}")
    endforeach()
  endif()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    _vigil_layer_dir(${sub} acc)
  endforeach()
  set(${out_var} ${acc} PARENT_SCOPE)
endfunction()

# Writes the table of the whole tree to `out`. Call it after every component
# has been added (targets may link targets defined later).
function(vigil_write_layering_table out)
  set(records)
  _vigil_layer_dir(${VIGIL_ROOT} records)
  list(REMOVE_DUPLICATES records)
  list(JOIN records "\n" text)
  file(CONFIGURE OUTPUT ${out} CONTENT "${text}\n" @ONLY)
endfunction()

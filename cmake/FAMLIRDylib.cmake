# fa_link_mlir_dylib(<target>...)
#
# Rewrites the link interface of each target so that the upstream MLIR
# libraries it names (MLIRIR, MLIRLinalgTransforms, ...) resolve to the one
# shared libMLIR.so (imported target `MLIR`) instead of Debian's static
# archives. add_mlir_library passes LINK_LIBS straight to
# target_link_libraries, so without this an installed fa library would drag
# static MLIR archives into a downstream link, and a plugin or shared library
# could end up with a second copy of MLIR (two TypeIDs for one type).
#
# The upstream C API archives (MLIRCAPI*) and test libraries are not part of
# libMLIR.so and are left alone.
function(fa_link_mlir_dylib)
  foreach(target IN LISTS ARGN)
    if(NOT TARGET ${target})
      continue()
    endif()
    foreach(property LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
      get_target_property(libs ${target} ${property})
      if(NOT libs)
        continue()
      endif()
      set(rewritten)
      foreach(lib IN LISTS libs)
        set(name "${lib}")
        set(linkOnly OFF)
        if(lib MATCHES "^\\$<LINK_ONLY:([^<>]+)>$")
          set(name "${CMAKE_MATCH_1}")
          set(linkOnly ON)
        endif()
        if(TARGET ${name} AND name MATCHES "^MLIR"
           AND NOT name MATCHES "^MLIRCAPI" AND NOT name MATCHES "Test")
          get_target_property(imported ${name} IMPORTED)
          if(imported)
            if(linkOnly)
              set(lib "$<LINK_ONLY:MLIR>")
            else()
              set(lib MLIR)
            endif()
          endif()
        endif()
        list(APPEND rewritten "${lib}")
      endforeach()
      list(REMOVE_DUPLICATES rewritten)
      set_property(TARGET ${target} PROPERTY ${property} "${rewritten}")
    endforeach()
  endforeach()
endfunction()

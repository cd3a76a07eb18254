# write_if_changed(PATH TEXT): write TEXT to PATH only when it differs from
# what is there, so an unrelated reconfigure leaves the generated file's time
# alone and rebuilds nothing. Included by the generators of this folder
# (aot_table.cmake, embed_sources.cmake), which run in script mode (cmake -P).
function(write_if_changed path text)
  if(EXISTS "${path}")
    file(READ "${path}" old)
    if(old STREQUAL text)
      return()
    endif()
  endif()
  file(WRITE "${path}" "${text}")
endfunction()

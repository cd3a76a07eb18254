# ppb_script_files(SCRIPT): for a generator run in script mode (cmake -P) with
# -DOUT=PATH -DFILES=A|B|...: stop with a message naming SCRIPT unless both are
# given, and make FILES a sorted CMake list. The paths come '|'-separated on the
# command line (a ';' would end the -D argument there); sorted, so what is
# generated never depends on the order they were listed in.
macro(ppb_script_files script)
  if(NOT OUT OR NOT FILES)
    message(FATAL_ERROR "${script}: need -DOUT=... -DFILES=...")
  endif()
  string(REPLACE "|" ";" FILES "${FILES}")
  list(SORT FILES)
endmacro()

# Compile the report assets (style.css, style.gp) into ppb_core, so `ppbench
# report` works from any folder without the source tree (harness/publish/report_assets.h).
# Regenerated whenever an asset changes.
set(PPB_REPORT_ASSET_FILES ${CMAKE_SOURCE_DIR}/reports/style.css ${CMAKE_SOURCE_DIR}/reports/style.gp)
set(PPB_REPORT_ASSETS_C ${CMAKE_BINARY_DIR}/generated/report_assets.c)
add_custom_command(
  OUTPUT ${PPB_REPORT_ASSETS_C}
  COMMAND ${CMAKE_COMMAND} -DOUT=${PPB_REPORT_ASSETS_C}
          -DCSS=${CMAKE_SOURCE_DIR}/reports/style.css -DGP=${CMAKE_SOURCE_DIR}/reports/style.gp
          -P ${CMAKE_SOURCE_DIR}/reports/embed_assets.cmake
  DEPENDS ${PPB_REPORT_ASSET_FILES} ${CMAKE_SOURCE_DIR}/reports/embed_assets.cmake
  COMMENT "Embedding report assets (reports/style.css, reports/style.gp)"
  VERBATIM)
target_sources(ppb_core PRIVATE ${PPB_REPORT_ASSETS_C})

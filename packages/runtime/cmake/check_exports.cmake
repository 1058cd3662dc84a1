# hipdnn_ep_check_exports(<target> PYTHON <python> ABI_DIR <dir>)
#
# After <target> (a shared library) links, checks that it exports exactly the
# functions of ABI_DIR/manifest.toml, each in the version node of its `since`
# (`python -m hipdnn_ep_abi check-symbols`). A missing or extra export fails
# the build and deletes the library, so no wheel carries a runtime whose
# exports differ from the manifest it embeds: without this, a definition
# deleted from the sources still builds (the version script and the header
# only declare it) and fails in users' processes as `undefined symbol`.
function(hipdnn_ep_check_exports target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "PYTHON;ABI_DIR" "")
  if(NOT ARG_PYTHON OR NOT ARG_ABI_DIR)
    message(FATAL_ERROR "hipdnn_ep_check_exports(${target}): PYTHON and ABI_DIR are required")
  endif()
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${ARG_ABI_DIR}
            ${ARG_PYTHON} -m hipdnn_ep_abi --manifest ${ARG_ABI_DIR}/manifest.toml
            check-symbols --delete-on-failure $<TARGET_FILE:${target}>
    COMMENT "Checking that ${target} exports exactly the ABI manifest's functions"
    VERBATIM)
endfunction()

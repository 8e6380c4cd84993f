# memest's outputs end to end (issue 10), one ctest per case of
# tests/output/checks.sh: checked writes to standard output and the --plot and
# --timeline files (exit 6), files written whole or not at all, refused output
# paths, outputs produced or refused (never dropped), the --json error
# document for every error, and strings from the model file escaped for text,
# JSON, CSV (read back by tests/tools/csv_fields.c) and SVG (xmllint; the
# cases that need it are skipped, visibly, when it is not installed).
add_executable(csv_fields ${CMAKE_CURRENT_SOURCE_DIR}/tools/csv_fields.c)
foreach(case stdout_full stdout_closed stdout_epipe stdout_fsize stdout_result_replaced
             stdout_failure_kept plot_no_dir timeline_no_dir plot_full timeline_full
             plot_directory plot_fsize_keeps_old timeline_fsize_no_partial plot_replace
             plot_dev_stdout same_plot_timeline plot_is_model plot_is_stdout stdout_is_model
             plot_empty_path dropped_refused max_batch_outputs fit_json_layers
             json_option_errors json_model_error json_probe_error hostile_text hostile_json
             hostile_svg hostile_long_svg hostile_csv hostile_flows hostile_probe
             hostile_warning loss_resolved generate_outputs timeline_ids alloc_conf_env)
  add_test(NAME output.${case}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/output/checks.sh $<TARGET_FILE:memest>
                   $<TARGET_FILE:csv_fields> $<TARGET_FILE:memest_fakecuda> ${PROJECT_SOURCE_DIR}
                   ${case})
  set_tests_properties(output.${case} PROPERTIES LABELS output SKIP_RETURN_CODE 77)
endforeach()

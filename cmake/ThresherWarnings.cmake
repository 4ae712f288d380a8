# thresher_target_defaults(<target>): the warnings and sanitizer flags every target shares.
function(thresher_target_defaults target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-unused-parameter)
endfunction()

# A sanitizer build is one preset away (CMakePresets.json "asan"): THRESHER_SANITIZE=address,undefined
set(THRESHER_SANITIZE "" CACHE STRING "Comma-separated -fsanitize= list, e.g. address,undefined")
if(THRESHER_SANITIZE)
  add_compile_options(-fsanitize=${THRESHER_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=${THRESHER_SANITIZE})
endif()

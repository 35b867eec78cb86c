# Build step: generate the Python REAPI stubs into OUT.
#   cmake -DOUT=<dir> -DPACKAGES="<debian packages>" -P gen-stubs.cmake
# Without the inputs it prints what to install and succeeds, so a build
# without the optional packages still works.
include(${CMAKE_CURRENT_LIST_DIR}/stub-inputs.cmake)
dtlto_reapi_find_stub_inputs(missing)
if(missing)
  message(STATUS "REAPI stubs skipped: missing ${missing} (apt-get install ${PACKAGES})")
  return()
endif()

# The stamp records what the stubs were made from; equal stamp, no work.
execute_process(COMMAND ${DTLTO_PROTOC} --version OUTPUT_VARIABLE protoc_version
                OUTPUT_STRIP_TRAILING_WHITESPACE)
set(stamp_text "${protoc_version}\n${DTLTO_GRPC_PYTHON_PLUGIN}\n")
foreach(proto ${DTLTO_REAPI_PROTOS})
  foreach(dir remoteapis googleapis)
    if(EXISTS ${DTLTO_REAPI_PROTO_ROOT}/${dir}/${proto})
      file(SHA256 ${DTLTO_REAPI_PROTO_ROOT}/${dir}/${proto} sum)
      string(APPEND stamp_text "${proto} ${sum}\n")
    endif()
  endforeach()
endforeach()
if(EXISTS ${OUT}/stamp.txt)
  file(READ ${OUT}/stamp.txt old_stamp)
  if(old_stamp STREQUAL stamp_text)
    return()
  endif()
endif()

# Generate next to OUT and rename, so a reader never sees half the stubs.
string(RANDOM LENGTH 8 suffix)
set(tmp ${OUT}.tmp-${suffix})
file(REMOVE_RECURSE ${tmp})
file(MAKE_DIRECTORY ${tmp})
execute_process(
  COMMAND ${DTLTO_PROTOC}
          -I${DTLTO_REAPI_PROTO_ROOT}/remoteapis
          -I${DTLTO_REAPI_PROTO_ROOT}/googleapis
          -I/usr/include
          --python_out=${tmp} --grpc_out=${tmp}
          --plugin=protoc-gen-grpc=${DTLTO_GRPC_PYTHON_PLUGIN}
          ${DTLTO_REAPI_PROTOS}
  RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  file(REMOVE_RECURSE ${tmp})
  message(FATAL_ERROR "protoc failed generating the REAPI stubs:\n${err}")
endif()
# Regular packages below the top level, so that a distribution package of
# the same name (python3-build has "build") cannot shadow ours; "google"
# itself stays a namespace package shared with python3-protobuf.
file(GLOB_RECURSE generated RELATIVE ${tmp} ${tmp}/*.py)
set(dirs "")
foreach(f ${generated})
  get_filename_component(d ${f} DIRECTORY)
  while(d AND NOT d STREQUAL "google")
    list(APPEND dirs ${d})
    get_filename_component(d ${d} DIRECTORY)
  endwhile()
endforeach()
list(REMOVE_DUPLICATES dirs)
foreach(d ${dirs})
  file(TOUCH ${tmp}/${d}/__init__.py)
endforeach()
file(WRITE ${tmp}/stamp.txt "${stamp_text}")
file(REMOVE_RECURSE ${OUT})
file(RENAME ${tmp} ${OUT})
message(STATUS "REAPI stubs generated in ${OUT}")

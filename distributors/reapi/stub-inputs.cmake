# Where the inputs of the REAPI stub generation are; shared by the configure
# step (CMakeLists.txt) and the build step (gen-stubs.cmake).
set(DTLTO_REAPI_PROTO_ROOT /usr/src/bazel-bootstrap/third_party)
set(DTLTO_REAPI_PROTOS
    build/bazel/remote/execution/v2/remote_execution.proto
    build/bazel/semver/semver.proto
    google/api/annotations.proto
    google/api/http.proto
    google/bytestream/bytestream.proto
    google/longrunning/operations.proto
    google/rpc/status.proto)

# Sets ${out} to a space-separated list of what is missing ("" when nothing).
function(dtlto_reapi_find_stub_inputs out)
  set(missing "")
  find_program(DTLTO_PROTOC protoc)
  find_program(DTLTO_GRPC_PYTHON_PLUGIN grpc_python_plugin)
  if(NOT DTLTO_PROTOC)
    string(APPEND missing " protoc")
  endif()
  if(NOT DTLTO_GRPC_PYTHON_PLUGIN)
    string(APPEND missing " grpc_python_plugin")
  endif()
  if(NOT EXISTS ${DTLTO_REAPI_PROTO_ROOT}/remoteapis/build/bazel/remote/execution/v2/remote_execution.proto)
    string(APPEND missing " ${DTLTO_REAPI_PROTO_ROOT}/remoteapis")
  endif()
  if(NOT EXISTS /usr/include/google/protobuf/any.proto)
    string(APPEND missing " /usr/include/google/protobuf/any.proto")
  endif()
  string(STRIP "${missing}" missing)
  set(${out} "${missing}" PARENT_SCOPE)
endfunction()

"""reapilib: what reapi.py needs beyond dtltodist.

  stubs        Debian's gRPC and the protocol stubs generated at build time
  tree         digests, blobs and the input root Merkle tree
  elfdeps      the shared libraries a shipped compiler loads through $ORIGIN
  action       a manifest job as a REAPI Action (layout of the input root)
  credentials  credential headers, never shown
  client       endpoints and every remote call: CAS, action cache, execution
  outputs      checked download of an action's outputs
  jobs         one job: cache lookup, execution, retries over endpoints
"""

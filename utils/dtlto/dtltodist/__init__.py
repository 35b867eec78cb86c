"""dtltodist: what every DTLTO distributor does the same way.

  manifest  load and validate the linker's JSON job manifest (the schema)
  paths     path rules for engines that mirror files on other machines
  runner    start, supervise and kill job processes (the only place that does)
  jobserver GNU make jobserver client
  report    progress, errors, summary line and exit codes
  cli       the options every distributor shares, and the main flow
  batch     the main flow of engines that run every job in one process
            (SN-DBS, Incredibuild)
  cmdline   argv as one command-line string (Windows rules) for engines
            that take a string

docs/local-distributor.md describes the API for writers of new distributors.
"""

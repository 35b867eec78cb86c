"""dtltodist: what every DTLTO distributor does the same way.

  manifest  load and validate the linker's JSON job manifest (the schema)
  paths     path rules for engines that mirror files on other machines
  runner    start, supervise and kill job processes (the only place that does)
  jobserver GNU make jobserver client
  report    progress, errors, summary line and exit codes
  cli       the options every distributor shares, and the main flow
  batch     the main flow of engines that run every job in one process
            (SN-DBS, Incredibuild, FASTBuild)
  bundle    one job as one file, for engines that send one input per
            compile (distcc, icecream, FASTBuild); docs/bundle.md
  hostpool  slots spread over a list of hosts (ssh.py, distcc.py)
  selfcontained, summary
            --self-contained: the import step here, plain clang on the
            farm; which links cannot go that way (the index shards)
  cmdline   argv as one command-line string (Windows rules) for engines
            that take a string
  transfer  a job's files as tar streams to and from a machine that does
            not share the build (Slurm stream mode, SSH); remote_job.py is
            the job side it runs there with `python3 -c`

docs/local-distributor.md describes the API for writers of new distributors.
"""

//===- ReportWriter.h - The link report's trace and page ------------------===//
//
// Turns a link's record (LinkReport.h) into the two files of its report:
//
//   FILE.json  a trace in the Chrome trace event format, which Perfetto and
//              chrome://tracing load: the linker's phases, one lane per
//              worker (or slot, or linker thread), one event per job attempt
//              with what is known of it in its args, LLD's --time-trace
//              scopes merged in when there are any; the analysis (totals,
//              the link's bound, the critical path) under otherData.dtlto;
//   FILE.html  a page with that trace inside it and everything to show it
//              (ReportPage.html): no network access, nothing else to load.
//
// The schema of otherData.dtlto and of the job events' args is documented in
// docs/usage.md ("The link report"); utils/dtlto/report.py checks it.
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_REPORTWRITER_H
#define DTLTO_REPORTWRITER_H

#include "dtlto/LinkReport.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <string>

namespace dtlto {

/// The trace of Rec, as JSON.
std::string reportTrace(const LinkRecord &Rec);

/// Writes <file>.json and <file>.html (HtmlPath) for Rec, each whole through
/// a temporary file renamed into place, so that a reader (or another link
/// writing the same report) never sees part of one. An error names the file.
llvm::Error writeReport(const LinkRecord &Rec, llvm::StringRef HtmlPath);

} // namespace dtlto

#endif

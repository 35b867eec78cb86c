# Makes the link report's page (ReportPage.html) a C++ string literal that
# ReportWriter.cpp includes: cmake -DIN=<page> -DOUT=<inc> -P EmbedPage.cmake
file(READ "${IN}" PAGE)
string(FIND "${PAGE}" ")dtlto-page\"" CLASH)
if(NOT CLASH EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw string delimiter )dtlto-page\"")
endif()
string(FIND "${PAGE}" "@DTLTO_TRACE@" MARK)
if(MARK EQUAL -1)
  message(FATAL_ERROR "${IN} has no @DTLTO_TRACE@ for the trace")
endif()
file(WRITE "${OUT}.tmp" "R\"dtlto-page(${PAGE})dtlto-page\"\n")
file(RENAME "${OUT}.tmp" "${OUT}")

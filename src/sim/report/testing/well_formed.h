// Test helper: checks that text is well-formed XML (report.html is written as XHTML-style markup,
// the charts as SVG) with Debian's libxml2, network access disabled. Used by the report and
// sim CLI tests only. Thread-compatible.
#ifndef SLUICE_SIM_REPORT_TESTING_WELL_FORMED_H_
#define SLUICE_SIM_REPORT_TESTING_WELL_FORMED_H_

#include <libxml/parser.h>

#include <string>

namespace sluice::sim::testing_util {

// "" when `text` parses as XML, else libxml2's first error message.
inline std::string XmlError(const std::string& text) {
  xmlResetLastError();
  xmlDocPtr doc = xmlReadMemory(text.data(), static_cast<int>(text.size()), "report.xml", nullptr,
                                XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
  if (doc != nullptr) {
    xmlFreeDoc(doc);
    return "";
  }
  const xmlError* e = xmlGetLastError();
  return e != nullptr && e->message != nullptr ? std::string(e->message) : "parse failed";
}

}  // namespace sluice::sim::testing_util

#endif  // SLUICE_SIM_REPORT_TESTING_WELL_FORMED_H_

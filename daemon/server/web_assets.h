// The dashboard's files, built into dtraind (daemon/web/, embedded by daemon/web/embed.cmake at
// build time, with Chart.js from Debian's libjs-chart.js): no CDN, nothing read at run time.
//
//   for (const WebAsset& a : WebAssets()) if (a.path == request.path) ...
//
// Constant data: safe for concurrent use.
#pragma once

#include <span>
#include <string_view>

namespace dtrain::server {

struct WebAsset {
  std::string_view path;          // the URL path it is served at, e.g. "/assets/app.js"
  std::string_view media_type;  // e.g. "text/javascript"; every asset is UTF-8 text
  std::string_view body;
};

std::span<const WebAsset> WebAssets();

}  // namespace dtrain::server

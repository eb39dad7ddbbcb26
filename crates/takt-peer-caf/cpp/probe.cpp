// Compiled by build.rs to learn whether CAF 0.17 headers are installed.
#include <caf/config.hpp>

#if CAF_VERSION < 1700 || CAF_VERSION >= 1800
#error "CAF 0.17 is required"
#endif

int takt_caf_probe() {
  return CAF_VERSION;
}

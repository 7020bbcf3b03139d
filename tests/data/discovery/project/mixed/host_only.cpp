// Host code mentioning __global__ only in comments and strings.
#include <string>
std::string describe() { return "__global__ void fake(int*) {}"; }

// grovectl: command-line client for groved. See docs/grovectl.md.

#include <iostream>

#include "grovectl/app.h"

int main(int argc, char** argv) {
  return grove::grovectl::RunGrovectl(argc, argv, std::cin, std::cout, std::cerr);
}

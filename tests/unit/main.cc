// Catch2 entry point of the unit and in-process multi-rank tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

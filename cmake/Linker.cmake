# Every preset links with mold (Debian's package mold, installed by scripts/install-deps.sh):
# the tree links 70-odd test and tool executables against large static libraries, and GNU ld
# spends about three times mold's CPU on them (README, "Building and testing"). gcc 12 and
# clang 14 both take -fuse-ld=mold, for 64- and 32-bit links alike.
# -DSOFTIB_LINKER=bfd (or lld, gold) picks another linker; a missing one is a configure error,
# never a silent fallback.
set(SOFTIB_LINKER mold CACHE STRING "Linker for every target (-fuse-ld=<this>)")
find_program(SOFTIB_LINKER_PROGRAM NAMES ld.${SOFTIB_LINKER} NO_CACHE)
if(NOT SOFTIB_LINKER_PROGRAM)
  message(FATAL_ERROR "softib: the linker ld.${SOFTIB_LINKER} is not installed "
                      "(scripts/install-deps.sh installs mold; -DSOFTIB_LINKER=bfd for GNU ld)")
endif()
add_link_options(-fuse-ld=${SOFTIB_LINKER})

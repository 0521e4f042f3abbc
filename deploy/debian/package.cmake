# The Debian package (scripts/build-deb.sh, the `deb` preset): memtrimd,
# memtrimd-daemon, the web module and TLS shims, the preload agent, the
# systemd unit and /etc/default/memtrimd.
#
# CPack rather than a debian/ directory: the package holds exactly what the
# install rules install (nothing listed a second time), its version is
# project()'s, and it builds in its own build directory with dpkg-dev alone
# (dpkg-shlibdeps computes Depends from the binaries) and help2man. What
# debhelper would have written, the three maintainer scripts beside this
# file (deb-systemd-helper and deb-systemd-invoke, as debhelper's do), is
# short. lintian reports no error and no warning on the result
# (tests/package/deb_install_test.sh).
#
# MEMTRIMD_INSTALL_SYSTEMD is off by default because its destinations are
# absolute (/lib/systemd/system, /etc/default): a plain `cmake --install
# --prefix DIR` must not write into the machine's /etc.
option(MEMTRIMD_INSTALL_SYSTEMD "Install the systemd unit and /etc/default/memtrimd (the .deb)" OFF)

if(MEMTRIMD_INSTALL_SYSTEMD)
  # The unit in deploy/systemd runs /usr/local/bin/memtrimd (cmake --install's
  # default prefix, the image); the packaged one runs the installed binary.
  file(READ ${PROJECT_SOURCE_DIR}/deploy/systemd/memtrimd.service memtrimd_unit)
  string(REPLACE "ExecStart=/usr/local/bin/memtrimd"
                 "ExecStart=${CMAKE_INSTALL_PREFIX}/bin/memtrimd" memtrimd_unit "${memtrimd_unit}")
  if(NOT memtrimd_unit MATCHES "\nExecStart=${CMAKE_INSTALL_PREFIX}/bin/memtrimd\n")
    message(FATAL_ERROR "deploy/systemd/memtrimd.service: no ExecStart=/usr/local/bin/memtrimd to rewrite")
  endif()
  file(WRITE ${PROJECT_BINARY_DIR}/deploy/memtrimd.service "${memtrimd_unit}")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
               ${PROJECT_SOURCE_DIR}/deploy/systemd/memtrimd.service)
  # /lib, not /usr/lib: where Debian 12's packages put units (merged /usr
  # makes them the same directory, but dpkg tracks the name it was given).
  install(FILES ${PROJECT_BINARY_DIR}/deploy/memtrimd.service DESTINATION /lib/systemd/system)
  install(FILES ${PROJECT_SOURCE_DIR}/deploy/systemd/memtrimd.default
          DESTINATION /etc/default RENAME memtrimd)
endif()

# What only the package carries, in the places Debian's policy and lintian
# expect: /usr/share/doc/memtrimd/copyright (machine-readable, DEP-5) and
# changelog.gz (a native package's), the manual page made by help2man from
# the built program's --help, and lintian's overrides, each with its reason.
option(MEMTRIMD_INSTALL_DEBIAN_FILES
       "Install the copyright, changelog, manual pages and lintian overrides (the .deb)" OFF)
# A distributor who builds the package sets its own address here (and in
# deploy/debian/changelog's trailer).
set(MEMTRIMD_DEB_MAINTAINER "memtrimd maintainers <memtrimd@example.org>"
    CACHE STRING "The .deb's Maintainer field")

if(MEMTRIMD_INSTALL_DEBIAN_FILES)
  # The changelog's newest entry must be this version: a second place to
  # change it, so a mismatch stops the configure rather than ship.
  file(STRINGS ${PROJECT_SOURCE_DIR}/deploy/debian/changelog changelog_head LIMIT_COUNT 1)
  if(NOT changelog_head MATCHES "^memtrimd \\(${PROJECT_VERSION}\\) ")
    message(FATAL_ERROR "deploy/debian/changelog starts with '${changelog_head}', "
                        "not an entry for memtrimd ${PROJECT_VERSION}: add one")
  endif()
  find_program(HELP2MAN help2man REQUIRED)
  find_program(GZIP gzip REQUIRED)
  set(deb_dir ${PROJECT_BINARY_DIR}/deploy/debian)
  file(MAKE_DIRECTORY ${deb_dir})
  # gzip -n: no name or time stamp in the header, so rebuilds are identical.
  add_custom_command(
    OUTPUT ${deb_dir}/changelog.gz
    COMMAND ${GZIP} -9nc ${PROJECT_SOURCE_DIR}/deploy/debian/changelog > ${deb_dir}/changelog.gz
    DEPENDS ${PROJECT_SOURCE_DIR}/deploy/debian/changelog
    VERBATIM)
  # The page is the program's own --help and --version (the launcher hands
  # both to memtrimd-daemon), so it cannot fall behind a flag.
  # memtrimd-daemon's page is a link to it: the same program, the same
  # command line.
  add_custom_command(
    OUTPUT ${deb_dir}/memtrimd.1.gz
    COMMAND ${HELP2MAN} --no-info --section=1
            "--name=native memory metrics and malloc_trim for a JVM or glibc process"
            --output=${deb_dir}/memtrimd.1 $<TARGET_FILE:memtrimd>
    COMMAND ${GZIP} -9nf ${deb_dir}/memtrimd.1
    DEPENDS memtrimd memtrimd-daemon
    VERBATIM)
  add_custom_target(memtrimd_debian_files ALL DEPENDS ${deb_dir}/changelog.gz ${deb_dir}/memtrimd.1.gz)
  file(CREATE_LINK memtrimd.1.gz ${deb_dir}/memtrimd-daemon.1.gz SYMBOLIC)
  install(FILES ${PROJECT_SOURCE_DIR}/deploy/debian/copyright ${deb_dir}/changelog.gz
          DESTINATION share/doc/memtrimd)
  install(FILES ${deb_dir}/memtrimd.1.gz ${deb_dir}/memtrimd-daemon.1.gz DESTINATION share/man/man1)
  install(FILES ${PROJECT_SOURCE_DIR}/deploy/debian/lintian-overrides
          DESTINATION share/lintian/overrides RENAME memtrimd)
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME memtrimd)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${MEMTRIMD_DEB_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "native memory metrics and malloc_trim for a JVM or glibc process")
# dpkg shows the description as written: lines under 80 columns.
set(CPACK_PACKAGE_DESCRIPTION
    "memtrimd watches one process's native memory from outside (smaps, glibc\n\
arena heaps, malloc statistics, JVM NMT through the attach socket), makes\n\
its glibc heap give free pages back on a schedule and serves Prometheus\n\
metrics. The package holds the program, the LD_PRELOAD agent for glibc\n\
targets and a systemd unit, installed but not enabled: choose the target\n\
and its user first.")
# The unit and /etc/default/memtrimd live outside the prefix: DESTDIR staging
# keeps the absolute destinations inside the package.
set(CPACK_SET_DESTDIR ON)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/deploy/debian/conffiles
    ${PROJECT_SOURCE_DIR}/deploy/debian/postinst
    ${PROJECT_SOURCE_DIR}/deploy/debian/prerm
    ${PROJECT_SOURCE_DIR}/deploy/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)

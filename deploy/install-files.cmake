# deploy/install-files.cmake - run by `cmake --install` (see deploy/install.cmake):
# writes the systemd units and the sample configs for the prefix being
# installed to, into the install (DESTDIR is honoured by file(INSTALL)).
# In: ORR_SOURCE_DIR, ORR_SYSCONFDIR, ORR_BINDIR_REL, ORR_STAGE, and
# CMAKE_INSTALL_PREFIX as the install sees it.
set(prefix "${CMAKE_INSTALL_PREFIX}")
if(IS_ABSOLUTE "${ORR_SYSCONFDIR}")
  set(etc "${ORR_SYSCONFDIR}")
elseif(prefix STREQUAL "/usr")
  set(etc "/etc")
else()
  set(etc "${prefix}/${ORR_SYSCONFDIR}")
endif()
set(ORR_BINDIR "${prefix}/${ORR_BINDIR_REL}")
set(ORR_CONFDIR "${etc}/orrery")
# The units' StateDirectory: systemd keeps it under /var/lib.
set(ORR_STATEDIR /var/lib/orrery)

file(REMOVE_RECURSE "${ORR_STAGE}")
file(GLOB units "${ORR_SOURCE_DIR}/deploy/systemd/*.service.in")
foreach(in ${units})
  get_filename_component(name "${in}" NAME)
  string(REGEX REPLACE "\\.in$" "" name "${name}")
  configure_file("${in}" "${ORR_STAGE}/systemd/${name}" @ONLY)
endforeach()
file(GLOB confs "${ORR_SOURCE_DIR}/deploy/etc/*.conf.in")
foreach(in ${confs})
  get_filename_component(name "${in}" NAME)
  string(REGEX REPLACE "\\.in$" "" name "${name}")
  configure_file("${in}" "${ORR_STAGE}/etc/${name}" @ONLY)
endforeach()
file(GLOB staged_units "${ORR_STAGE}/systemd/*.service")
file(INSTALL ${staged_units} DESTINATION "${prefix}/lib/systemd/system"
     FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
file(GLOB staged_confs "${ORR_STAGE}/etc/*.conf")
file(INSTALL ${staged_confs} DESTINATION "${ORR_CONFDIR}"
     FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
